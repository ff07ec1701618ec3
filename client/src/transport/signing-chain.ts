import { asCredentialsNotFound } from './credentials-error.js';
import { createSigV4Signer, type RequestSigner, type SigV4SignerOptions } from './signing.js';

/**
 * Signs requests with AWS Signature Version 4 for API Gateway's IAM authorization. Without
 * `credentials`: the environment's keys if it has them (Lambda), else the AWS SDK's default provider
 * chain (`@aws-sdk/credential-provider-node`: SSO and ini profiles, web identity, ECS task role, EC2
 * instance role), loaded on the first signed request that needs it; it caches credentials and
 * refreshes them before they expire. When the chain finds none, signing rejects with a
 * `CredentialsNotFoundError` that says where credentials come from.
 *
 * A Lambda that bundles its code should import `sigv4Signer` from `leasehold/lambda` instead: same
 * signer, environment keys only, and its bundle does not contain the provider chain (about 370 KiB minified).
 */
export function sigv4Signer(options: SigV4SignerOptions = {}): RequestSigner {
  return createSigV4Signer(options, async () => {
    // Loaded lazily: users of the unsigned client, and signers with keys, never load the chain.
    const { defaultProvider } = await import('@aws-sdk/credential-provider-node');
    const chain = defaultProvider();
    return async function defaultChainCredentials() {
      try {
        return await chain();
      } catch (error) {
        throw asCredentialsNotFound(error);
      }
    };
  });
}

import com.amazonaws.services.dynamodbv2.local.main.ServerRunner;
import com.amazonaws.services.dynamodbv2.local.server.DynamoDBProxyServer;
import java.lang.reflect.Field;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

/**
 * Starts DynamoDB Local bound to 127.0.0.1 only.
 *
 * The emulator has no host option and listens on every interface, which would expose an
 * unauthenticated database to the network from a laptop. We build the server exactly as the
 * stock ServerRunner does (same command-line flags), then pin its Jetty connectors to loopback
 * before they open a socket.
 */
public final class LoopbackDynamoDBLocal {
  public static void main(String[] args) throws Exception {
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
    Field serverField = DynamoDBProxyServer.class.getDeclaredField("server");
    serverField.setAccessible(true);
    Server jetty = (Server) serverField.get(proxy);
    int pinned = 0;
    for (Connector connector : jetty.getConnectors()) {
      if (connector instanceof ServerConnector) {
        ((ServerConnector) connector).setHost("127.0.0.1");
        pinned++;
      }
    }
    if (pinned == 0) {
      throw new IllegalStateException("no Jetty connector found to pin to 127.0.0.1; refusing to listen on all interfaces");
    }
    // Exit when our parent closes stdin (it died, even by SIGKILL): never leave an orphan Java.
    Thread watchdog = new Thread(() -> {
      try {
        while (System.in.read() != -1) {
          // ignore input
        }
      } catch (Exception ignored) {
        // stdin broken: same as closed
      }
      System.exit(0);
    }, "leasehold-parent-watchdog");
    watchdog.setDaemon(true);
    if (!"false".equals(System.getProperty("leasehold.exitWithParent"))) {
      watchdog.start();
    }
    proxy.start();
    System.out.println("leasehold: DynamoDB Local listening on 127.0.0.1");
    proxy.join();
  }
}

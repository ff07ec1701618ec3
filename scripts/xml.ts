/** Text or an attribute value made safe inside XML (the SVG plots of the bench and the chaos timeline). */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => XML_ENTITIES[c as keyof typeof XML_ENTITIES]);
}

const XML_ENTITIES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' } as const;

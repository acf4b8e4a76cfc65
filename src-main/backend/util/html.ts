/** Escapes text for HTML content and quoted attributes (backtick too, for old attribute parsers). */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"'`]/g, (c) => `&#${c.charCodeAt(0)};`);
}

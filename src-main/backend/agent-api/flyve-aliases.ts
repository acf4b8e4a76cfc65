// Both dialects on the agent API at all times (DESIGN.md "Deeplink", issue 9): the reference
// agents call every resource by its Flyve name (`PluginFlyvemdmAgent`, `search/PluginFlyvemdmTaskstatus/…`)
// and GLPI clients add a trailing slash (`changeActiveProfile/`). Rather than a route per name,
// the URL is rewritten before routing, so any route mounted as `/api/PluginMdmX` (today's and those
// added later) answers as `/api/PluginFlyvemdmX` too, with or without a trailing slash.

const FLYVE_RESOURCE = /^(\/api\/(?:search\/)?)PluginFlyvemdm(?=[A-Za-z])/;

/** The URL the router sees: Flyve names mapped to ours, one trailing slash dropped under /api/. */
export function agentApiUrl(url: string): string {
  if (!url.startsWith('/api/')) return url;
  const queryAt = url.indexOf('?');
  let path = queryAt === -1 ? url : url.slice(0, queryAt);
  const query = queryAt === -1 ? '' : url.slice(queryAt);
  path = path.replace(FLYVE_RESOURCE, '$1PluginMdm');
  if (path.length > '/api/'.length && path.endsWith('/')) path = path.slice(0, -1);
  return path + query;
}

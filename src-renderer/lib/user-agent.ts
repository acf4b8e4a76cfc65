/**
 * A browser's User-Agent in a few words ("Firefox 140 on Linux"), for the list of one's sessions;
 * the whole string stays available beside it. Null when it says nothing recognisable.
 */
export function describeUserAgent(userAgent: string | null): string | null {
  if (!userAgent) return null;
  const version = (name: string) => new RegExp(`${name}/(\\d+)`).exec(userAgent)?.[1];
  const browser =
    (version('Electron') && `MDM Console desktop ${version('Electron')}`) ||
    (version('Edg') && `Edge ${version('Edg')}`) ||
    (version('OPR') && `Opera ${version('OPR')}`) ||
    (version('Firefox') && `Firefox ${version('Firefox')}`) ||
    (version('Chrome') && `Chrome ${version('Chrome')}`) ||
    (/Safari\//.test(userAgent) && version('Version') && `Safari ${version('Version')}`) ||
    (/^curl\//.test(userAgent) && 'curl') ||
    null;
  const system = /Android/.test(userAgent)
    ? 'Android'
    : /iPhone|iPad/.test(userAgent)
      ? 'iOS'
      : /Windows/.test(userAgent)
        ? 'Windows'
        : /Mac OS X|Macintosh/.test(userAgent)
          ? 'macOS'
          : /CrOS/.test(userAgent)
            ? 'ChromeOS'
            : /Linux/.test(userAgent)
              ? 'Linux'
              : null;
  if (!browser && !system) return null;
  return [browser ?? 'A browser', system ? `on ${system}` : null].filter(Boolean).join(' ');
}

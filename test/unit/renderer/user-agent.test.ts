import { describe, expect, it } from 'vitest';
import { describeUserAgent } from '../../../src-renderer/lib/user-agent.ts';

describe('a session’s browser in a few words', () => {
  it('names the browser and its system, and says nothing of what it cannot read', () => {
    expect(describeUserAgent('Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0')).toBe(
      'Firefox 140 on Linux',
    );
    expect(
      describeUserAgent(
        'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/150.0.0.0 Safari/537.36 Edg/150.0.0.0',
      ),
    ).toBe('Edge 150 on Windows');
    expect(describeUserAgent('Mozilla/5.0 (Linux; Android 16) AppleWebKit/537.36 Chrome/150.0 Mobile')).toBe(
      'Chrome 150 on Android',
    );
    expect(
      describeUserAgent(
        'Mozilla/5.0 (iPhone; CPU iPhone OS 19_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/19.0 Mobile/15E148 Safari/604.1',
      ),
    ).toBe('Safari 19 on iOS');
    expect(
      describeUserAgent(
        'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 Chrome/150.0 Electron/42.1.0 Safari/537.36',
      ),
    ).toBe('MDM Console desktop 42 on macOS');
    expect(describeUserAgent('curl/8.14.1')).toBe('curl');
    expect(describeUserAgent('something else')).toBeNull();
    expect(describeUserAgent(null)).toBeNull();
  });
});

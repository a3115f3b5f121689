import { describe, expect, it } from "vitest";
import { addressPrefix, describeUserAgent } from "../../src/security/device";

// docs/security.md, "Devices": what a session shows of where it was started.

describe('docs/security.md, "Devices": the address prefix', () => {
  it.each([
    ["203.0.113.77", "203.0.113.0/24"],
    ["8.8.8.8", "8.8.8.0/24"],
    ["2001:db8:abcd:12::1", "2001:db8:abcd::/48"],
    ["2001:0db8:00ab:ffff:1:2:3:4", "2001:db8:ab::/48"],
    ["2001:db8::1", "2001:db8::/48"],
    ["::1", "::/48"],
    ["2001:0:ab::9", "2001:0:ab::/48"],
  ])("%s → %s", (address, prefix) => {
    expect(addressPrefix(address)).toBe(prefix);
  });

  it.each(["", "256.1.1.1", "1.2.3", "localhost", "2001:db8", "12345::1", "1.2.3.4/24", "::g"])("%j is not an address", (address) => {
    expect(addressPrefix(address)).toBeNull();
  });
});

describe('docs/security.md, "Devices": the device a User-Agent names', () => {
  it.each([
    ["Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", "Chrome 131 on macOS"],
    ["Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", "Firefox 133 on Linux"],
    [
      "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1",
      "Safari 17 on iOS",
    ],
    [
      "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.2903.86",
      "Microsoft Edge 131 on Windows",
    ],
  ])("%s", (userAgent, device) => {
    expect(describeUserAgent(userAgent).device).toBe(device);
  });

  it("a client that names no browser has no device", () => {
    expect(describeUserAgent("curl/8.5.0").device).toBeNull();
    expect(describeUserAgent(null).device).toBeNull();
  });
});

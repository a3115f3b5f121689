import { describe, expect, it } from "vitest";
import { checkOutboundUrl, type OutboundKind } from "../../src/outbound/allow-list";

const refused = (kind: OutboundKind, url: string, origins: string[] = []) => checkOutboundUrl(kind, url, origins).ok === false;

describe('docs/targets.md, "Outbound safety"', () => {
  it.each([
    "https://localhost/hook",
    "https://127.0.0.1/hook",
    "https://[::1]/hook",
    "https://10.0.0.1/hook",
    "https://169.254.169.254/latest/meta-data/",
    "https://metadata.google.internal/computeMetadata/v1/",
    "https://2130706433/hook",
    "https://0x7f000001/hook",
    "https://0x7f.0.0.1/hook",
    "https://017700000001/hook",
    "https://[::ffff:127.0.0.1]/hook",
    "https://[fd00::1]/hook",
    "https://192.168.1.1/hook",
    "https://api.localhost/hook",
    "https://printer.local/hook",
    "https://router.home.arpa/hook",
    "https://intranet/hook",
    "https://LOCALHOST./hook",
    "http://hooks.example.com/hook",
    "https://user:pass@hooks.example.com/hook",
    "not a url",
  ])("a webhook target at %s is refused", (url) => {
    expect(refused("webhook", url)).toBe(true);
  });

  it("a webhook target on a public https host is accepted", () => {
    expect(checkOutboundUrl("webhook", "https://hooks.example.com:8443/herald?x=1", [])).toMatchObject({ ok: true });
  });

  it.each([
    ["push", "https://fcm.googleapis.com/fcm/send/abc"],
    ["push", "https://updates.push.services.mozilla.com/wpush/v2/abc"],
    ["push", "https://web.push.apple.com/QGx"],
    ["push", "https://wns2-par02p.notify.windows.com/w/?token=abc"],
    ["slack", "https://hooks.slack.com/services/T000/B000/XXXX"],
    ["teams", "https://prod-12.westus.logic.azure.com:443/workflows/abc/triggers/manual/paths/invoke"],
    ["teams", "https://default1234.environment.api.powerplatform.com/powerautomate/automations/direct/workflows/abc"],
    ["discord", "https://discord.com/api/webhooks/123/abc"],
  ] as const)("a %s URL on its service (%s) is accepted", (kind, url) => {
    expect(checkOutboundUrl(kind, url, [])).toMatchObject({ ok: true });
  });

  it.each([
    ["push", "https://push.example.com/abc"],
    ["push", "https://fcm.googleapis.com.evil.test/abc"],
    ["push", "http://fcm.googleapis.com/fcm/send/abc"],
    ["slack", "https://hooks.slack.com.evil.test/services/x"],
    ["slack", "https://evilhooks.slack.com/services/x"],
    ["teams", "https://logic.azure.com.evil.test/workflows/x"],
    ["discord", "https://discord.com/channels/123"],
    ["discord", "https://discord.gg/api/webhooks/1/x"],
  ] as const)("a %s URL elsewhere (%s) is refused", (kind, url) => {
    expect(refused(kind, url)).toBe(true);
  });

  it("OUTBOUND_ALLOWED_ORIGINS replaces every built-in list, for every kind", () => {
    const origins = ["http://127.0.0.1:8787"];
    for (const kind of ["push", "webhook", "slack", "teams", "discord"] as const) {
      expect(checkOutboundUrl(kind, "http://127.0.0.1:8787/stand-in", origins)).toMatchObject({ ok: true });
      expect(refused(kind, "https://hooks.slack.com/services/T/B/X", origins)).toBe(true);
      expect(refused(kind, "http://127.0.0.1:8788/stand-in", origins)).toBe(true);
    }
  });
});

// The second factor in the bench (docs/benchmarks.md, "Second factor"): the second step of a sign-in with an
// authenticator app's code, passwordless sign-in with a passkey, step-up with a code, and A3's timing for an account
// with a factor. Codes and passkeys come from the suite's own TOTP arithmetic (src/auth/mfa/totp.ts) and software
// authenticator (test/passkeys/soft-authenticator.ts), bundled here by esbuild: the bench signs in as a client would.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { root } from "./harness.mjs";
import { interleavedSamples, summarize } from "./measure.mjs";
import { mannWhitney } from "./stats.mjs";

/** `totpCode`, `totpStep` and `SoftAuthenticator`, built for Node from the TypeScript the tests use. */
async function clientSide() {
  const esbuild = createRequire(path.join(root, "package.json"))("esbuild");
  const out = await esbuild.build({
    stdin: {
      contents: [
        'export { totpCode, totpStep } from "./src/auth/mfa/totp.ts";',
        'export { SoftAuthenticator } from "./test/passkeys/soft-authenticator.ts";',
      ].join("\n"),
      resolveDir: root,
      loader: "ts",
    },
    bundle: true,
    format: "esm",
    platform: "node",
    write: false,
    logLevel: "error",
  });
  const dir = mkdtempSync(path.join(tmpdir(), "herald-bench-2fa-"));
  const file = path.join(dir, "client.mjs");
  writeFileSync(file, out.outputFiles[0].contents);
  try {
    return await import(pathToFileURL(file).href);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Each user's authenticator app accepts a step once (docs/second-factor.md, "Authenticator app"): the code for the
 * first step after the last one used, waiting (untimed) for the clock when that step is not yet within one of now.
 */
async function nextCode(lib, user) {
  const step = Math.max(lib.totpStep(Date.now()), (user.lastStep ?? -Infinity) + 1);
  const opensAt = (step - 1) * 30_000;
  if (Date.now() < opensAt) await new Promise((resolve) => setTimeout(resolve, opensAt - Date.now() + 50));
  user.lastStep = step;
  return lib.totpCode(user.secret, step);
}

/**
 * Seeds `count` users with an authenticator app and as many with a passkey, then measures. `api(method, route,
 * options)` is the bench's JSON call; `newUser(username)` makes a member and signs them in; `origin` is ACCESS_URL's.
 */
export async function secondFactorBench({ client, api, newUser, password, origin, samples, enumerationSamples, log }) {
  const lib = await clientSide();
  log(`second factor: ${samples} users with an authenticator app, ${samples} with a passkey`);
  const totpUsers = [];
  for (let i = 0; i < samples; i++) {
    const user = await newUser(`totp-${i}`);
    const { secret } = await api("POST", "/users/me/mfa/totp", { token: user.token });
    const enrolled = { ...user, secret };
    await api("POST", "/users/me/mfa/totp/confirm", { token: user.token, body: { code: await nextCode(lib, enrolled) } });
    totpUsers.push(enrolled);
  }
  const passkeyUsers = [];
  for (let i = 0; i < samples; i++) {
    const user = await newUser(`passkey-${i}`);
    const key = await lib.SoftAuthenticator.create("ES256");
    const options = await api("POST", "/users/me/passkeys/options", { token: user.token });
    await api("POST", "/users/me/passkeys", { token: user.token, body: { response: await key.register(options, { origin }) } });
    passkeyUsers.push({ ...user, key });
  }

  const post = (route, body, headers) => client.request("POST", `/api/v2${route}`, { body, headers });
  const timed = async (label, runs) => {
    const times = [];
    let bad = 0;
    let lastBad;
    for (const run of runs) {
      const r = await run();
      if (!r.ok) {
        bad++;
        lastBad = `${r.status} ${r.text.slice(0, 200)}`;
      }
      times.push(r.ms);
    }
    log(`second factor: ${label}, ${times.length} samples`);
    return { ...summarize(times), bad, lastBad };
  };

  // The second step with the app's code: the password step before each one is not timed.
  const mfaTotp = await timed(
    "POST /users/login/mfa with a code",
    totpUsers.map((user) => async () => {
      const first = await post("/users/login", { email: user.email, password });
      const { mfa_token } = JSON.parse(first.text);
      const code = await nextCode(lib, user);
      const r = await post("/users/login/mfa", { mfa_token, code });
      return { ...r, ok: r.status === 201 };
    }),
  );
  // The password step itself for these users (200 mfa_required), the step the target is set against.
  const mfaPasswordStep = await timed(
    "POST /users/login, right password, account with a factor",
    totpUsers.map((user) => async () => {
      const r = await post("/users/login", { email: user.email, password });
      return { ...r, ok: r.status === 200 };
    }),
  );
  // Step-up with a code, on the session each user enrolled with. The dashboard asks for it right after the request it
  // answers (a 403 `step-up required`), so each follows, untimed, another request of the same session, and
  // authentication finds the key in the isolate's cache as it would then (docs/benchmarks.md, "Second factor").
  const stepUpCode = await timed(
    "POST /users/me/step-up with a code",
    totpUsers.map((user) => async () => {
      const code = await nextCode(lib, user);
      await client.request("GET", "/api/v2/users/me", { headers: { "Service-Session-Token": user.token } });
      const r = await post("/users/me/step-up", { code }, { "Service-Session-Token": user.token });
      return { ...r, ok: r.status === 204 };
    }),
  );
  // Passwordless: the options round trip and the sign-in, each timed.
  const optionTimes = [];
  const passkeySignIn = await timed(
    "POST /users/login/passkey",
    passkeyUsers.map((user) => async () => {
      const options = await post("/users/login/passkey/options", {});
      optionTimes.push(options.ms);
      const response = await user.key.assert(JSON.parse(options.text), { origin });
      const r = await post("/users/login/passkey", { response });
      return { ...r, ok: r.status === 201 };
    }),
  );

  // A3's timing with a factor: a wrong password on an account with an app against an unknown e-mail, interleaved.
  const factorUser = totpUsers[0];
  const wrong = "Wrong-Password-12-Xylophone";
  const pairs = await interleavedSamples(
    client,
    {
      known: { method: "POST", path: "/api/v2/users/login", body: { email: factorUser.email, password: wrong } },
      unknown: { method: "POST", path: "/api/v2/users/login", body: { email: "nobody-with-a-factor@bench.example.com", password: wrong } },
    },
    { samples: enumerationSamples },
  );
  const a3Factor = {
    ...mannWhitney(pairs.known.samples, pairs.unknown.samples),
    known: { ...summarize(pairs.known.samples), statuses: pairs.known.statuses },
    unknown: { ...summarize(pairs.unknown.samples), statuses: pairs.unknown.statuses },
  };
  return { mfaTotp, mfaPasswordStep, stepUpCode, passkeySignIn, passkeyOptions: summarize(optionTimes), a3Factor };
}

// A private Postfix instance for the end-to-end mail test: Debian's Postfix 3.7 with Cyrus SASL, on a free 127.0.0.1
// port, in a temporary directory of its own (configuration, queue, Maildir, log), so it touches nothing of the
// machine's own mail setup. It is configured the way a combined relay usually is: STARTTLS offered (with the test
// CA's certificate for localhost), AUTH PLAIN LOGIN CRAM-MD5 advertised but optional for mynetworks, a strict HELO
// check, and local delivery of example.net to one Maildir. Needs root (Postfix's master runs as root and drops to the
// postfix user) and the Debian packages postfix, sasl2-bin and libsasl2-modules; .ci/run installs them.
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import path from "node:path";

const TLS_DIR = path.resolve(import.meta.dirname, "../peers/tls");
/** Queue directories and their owners and modes, as Postfix's postfix-files sets them. */
const QUEUE_DIRS: [name: string, group: "root" | "postdrop", mode: number][] = [
  ...["active", "bounce", "corrupt", "defer", "deferred", "flush", "hold", "incoming", "private", "saved", "trace"].map(
    (d): [string, "root", number] => [d, "root", 0o700],
  ),
  ["maildrop", "postdrop", 0o730],
  ["public", "postdrop", 0o710],
];

export interface PostfixInstance {
  port: number;
  /** Files delivered to the Maildir so far, as raw RFC 5322 text, oldest first. */
  delivered(): string[];
  /** Postfix's own log, for failure messages. */
  log(): string;
  stop(): void;
}

/** Why Postfix cannot run here, or undefined when it can. */
export function postfixUnavailable(): string | undefined {
  if (userInfo().uid !== 0) return "the Postfix test needs root";
  for (const bin of ["/usr/sbin/postfix", "/usr/sbin/saslpasswd2", "/usr/lib/postfix/sbin/master"]) {
    if (!existsSync(bin)) return `${bin} is missing (apt-get install postfix sasl2-bin libsasl2-modules)`;
  }
  return undefined;
}

function id(flag: "-u" | "-g", name: string): number {
  return Number(execFileSync("id", [flag, name]).toString().trim());
}

export function startPostfix(port: number): PostfixInstance {
  const dir = mkdtempSync(path.join(tmpdir(), "herald-postfix-"));
  chmodSync(dir, 0o755);
  const [etc, spool, data, mail, sasl] = ["etc", "spool", "data", "mail", "sasl"].map((d) => path.join(dir, d)) as [
    string,
    string,
    string,
    string,
    string,
  ];
  const postfixUid = id("-u", "postfix");
  const postfixGid = id("-g", "postfix");
  const postdropGid = Number(execFileSync("getent", ["group", "postdrop"]).toString().split(":")[2]);
  for (const d of [etc, path.join(etc, "sasl"), spool, path.join(spool, "pid"), data, mail, sasl]) mkdirSync(d, { recursive: true });
  for (const [name, group, mode] of QUEUE_DIRS) {
    const d = path.join(spool, name);
    mkdirSync(d);
    chownSync(d, postfixUid, group === "postdrop" ? postdropGid : 0);
    chmodSync(d, mode);
  }
  for (const d of [data, mail, sasl]) chownSync(d, postfixUid, postfixGid);

  writeFileSync(
    path.join(etc, "main.cf"),
    `compatibility_level = 3.6
queue_directory = ${spool}
data_directory = ${data}
meta_directory = /etc/postfix
shlib_directory = /usr/lib/postfix
daemon_directory = /usr/lib/postfix/sbin
command_directory = /usr/sbin
mail_owner = postfix
setgid_group = postdrop
myhostname = mx.example.net
mydomain = example.net
mydestination =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
smtpd_banner = $myhostname ESMTP
smtpd_helo_required = yes
smtpd_helo_restrictions = reject_invalid_helo_hostname, reject_non_fqdn_helo_hostname
smtpd_sender_restrictions = reject_non_fqdn_sender
smtpd_recipient_restrictions = reject_non_fqdn_recipient, permit_mynetworks, permit_sasl_authenticated, reject_unauth_destination
smtpd_sasl_auth_enable = yes
smtpd_sasl_type = cyrus
smtpd_sasl_path = smtpd
cyrus_sasl_config_path = ${path.join(etc, "sasl")}
smtpd_tls_security_level = may
smtpd_tls_cert_file = ${path.join(TLS_DIR, "server.pem")}
smtpd_tls_key_file = ${path.join(TLS_DIR, "server-key.pem")}
smtpd_tls_received_header = yes
virtual_mailbox_domains = example.net
virtual_mailbox_base = ${mail}
virtual_mailbox_maps = static:inbox/
virtual_uid_maps = static:${postfixUid}
virtual_gid_maps = static:${postfixGid}
alias_maps =
alias_database =
local_recipient_maps =
maillog_file = ${path.join(dir, "maillog")}
maillog_file_prefixes = ${dir}
`,
  );
  // Every service chroot-free, so the instance needs nothing outside its directory and the system libraries.
  writeFileSync(
    path.join(etc, "master.cf"),
    [
      `${port} inet n - n - - smtpd`,
      "pickup unix n - n 60 1 pickup",
      "cleanup unix n - n - 0 cleanup",
      "qmgr unix n - n 300 1 qmgr",
      "tlsmgr unix - - n 1000? 1 tlsmgr",
      "rewrite unix - - n - - trivial-rewrite",
      "bounce unix - - n - 0 bounce",
      "defer unix - - n - 0 bounce",
      "trace unix - - n - 0 bounce",
      "verify unix - - n - 1 verify",
      "flush unix n - n 1000? 0 flush",
      "proxymap unix - - n - - proxymap",
      "smtp unix - - n - - smtp",
      "relay unix - - n - - smtp",
      "showq unix n - n - - showq",
      "error unix - - n - - error",
      "retry unix - - n - - error",
      "discard unix - - n - - discard",
      "virtual unix - n n - - virtual",
      "anvil unix - - n - 1 anvil",
      "scache unix - - n - 1 scache",
      "postlog unix-dgram n - n - 1 postlogd",
      "",
    ].join("\n"),
  );
  const sasldb = path.join(sasl, "sasldb2");
  writeFileSync(
    path.join(etc, "sasl", "smtpd.conf"),
    `pwcheck_method: auxprop\nauxprop_plugin: sasldb\nmech_list: PLAIN LOGIN CRAM-MD5\nsasldb_path: ${sasldb}\n`,
  );
  const passwd = spawnSync("/usr/sbin/saslpasswd2", ["-p", "-c", "-f", sasldb, "-u", "example.net", "herald"], { input: "relay-secret" });
  if (passwd.status !== 0) throw new Error(`saslpasswd2 failed: ${passwd.stderr.toString()}`);
  chownSync(sasldb, postfixUid, postfixGid);

  const postfix = (command: string) => spawnSync("/usr/sbin/postfix", ["-c", etc, command], { encoding: "utf8" });
  const logFile = path.join(dir, "maillog");
  const log = () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : "");
  const started = postfix("start");
  if (started.status !== 0) throw new Error(`postfix start failed (${started.status}): ${started.stderr}${log()}`);

  const maildir = path.join(mail, "inbox", "new");
  return {
    port,
    delivered: () =>
      existsSync(maildir)
        ? readdirSync(maildir)
            .sort()
            .map((f) => readFileSync(path.join(maildir, f), "utf8"))
        : [],
    log,
    stop: () => {
      postfix("stop");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

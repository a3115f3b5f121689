import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/** Timestamps are stored as RFC 3339 UTC strings with milliseconds (SPEC §1), so they sort as text. */
const timestamp = (name: string) => text(name);

export const users = sqliteTable(
  "users",
  {
    id: text("id").primaryKey(),
    email: text("email").notNull(),
    username: text("username").notNull(),
    name: text("name").notNull().default(""),
    /** PHC string (argon2id, or an imported Coder pbkdf2-sha256 hash); null for users without a password. */
    hashedPassword: text("hashed_password"),
    loginType: text("login_type", { enum: ["password", "oidc", "github", "none"] }).notNull(),
    status: text("status", { enum: ["active", "suspended"] }).notNull().default("active"),
    /** Site roles besides the implicit `member` (JSON array). */
    roles: text("roles", { mode: "json" }).$type<string[]>().notNull().default(sql`'[]'`),
    /** Service accounts: no password sign-in, no custom notifications (SPEC §5). */
    isSystem: integer("is_system", { mode: "boolean" }).notNull().default(false),
    /** Soft delete keeps audit history meaningful; deleted users' names and e-mails can be reused. */
    deleted: integer("deleted", { mode: "boolean" }).notNull().default(false),
    createdAt: timestamp("created_at").notNull(),
    updatedAt: timestamp("updated_at").notNull(),
    lastSeenAt: timestamp("last_seen_at"),
  },
  (t) => [
    uniqueIndex("users_email_live").on(sql`lower(${t.email})`).where(sql`${t.deleted} = 0 AND ${t.email} <> ''`),
    uniqueIndex("users_username_live").on(sql`lower(${t.username})`).where(sql`${t.deleted} = 0`),
  ],
);

export const organizations = sqliteTable("organizations", {
  id: text("id").primaryKey(),
  name: text("name").notNull().unique(),
  displayName: text("display_name").notNull(),
  isDefault: integer("is_default", { mode: "boolean" }).notNull().default(false),
  createdAt: timestamp("created_at").notNull(),
  updatedAt: timestamp("updated_at").notNull(),
});

export const organizationMembers = sqliteTable(
  "organization_members",
  {
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id),
    /** Organization roles besides the implicit `organization-member` (JSON array). */
    roles: text("roles", { mode: "json" }).$type<string[]>().notNull().default(sql`'[]'`),
    createdAt: timestamp("created_at").notNull(),
    updatedAt: timestamp("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.organizationId] }), index("org_members_org").on(t.organizationId)],
);

export const apiKeys = sqliteTable(
  "api_keys",
  {
    /** The public 10-character half of the token. */
    id: text("id").primaryKey(),
    /** Hex SHA-256 of the 22-character secret half; the secret itself is never stored. */
    hashedSecret: text("hashed_secret").notNull(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    /** `token` for named API tokens; otherwise the login method that created the session. */
    loginType: text("login_type", { enum: ["password", "oidc", "github", "token"] }).notNull(),
    tokenName: text("token_name"),
    scopes: text("scopes", { mode: "json" }).$type<string[]>().notNull().default(sql`'["all"]'`),
    lifetimeSeconds: integer("lifetime_seconds").notNull(),
    expiresAt: timestamp("expires_at").notNull(),
    createdAt: timestamp("created_at").notNull(),
    updatedAt: timestamp("updated_at").notNull(),
    lastUsed: timestamp("last_used").notNull(),
  },
  (t) => [
    index("api_keys_user").on(t.userId),
    uniqueIndex("api_keys_user_token_name").on(t.userId, t.tokenName).where(sql`${t.tokenName} IS NOT NULL`),
  ],
);

export const auditLogs = sqliteTable(
  "audit_logs",
  {
    id: text("id").primaryKey(),
    time: timestamp("time").notNull(),
    /** The acting user; null for unauthenticated actions such as a failed login. */
    userId: text("user_id"),
    action: text("action").notNull(),
    resourceType: text("resource_type").notNull(),
    resourceId: text("resource_id").notNull(),
    /** JSON object describing what changed; never contains secrets or hashes. */
    diff: text("diff", { mode: "json" }).$type<Record<string, unknown>>().notNull().default(sql`'{}'`),
    ip: text("ip").notNull().default(""),
    requestId: text("request_id").notNull().default(""),
  },
  (t) => [index("audit_logs_time").on(t.time), index("audit_logs_resource").on(t.resourceType, t.resourceId)],
);

export type UserRow = typeof users.$inferSelect;
export type ApiKeyRow = typeof apiKeys.$inferSelect;
export type OrganizationRow = typeof organizations.$inferSelect;
export type AuditLogInsert = typeof auditLogs.$inferInsert;

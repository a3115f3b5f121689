// drizzle-kit's durable-sqlite output: a JS module bundling the journal and the SQL files (imported as text).
declare module "*/drizzle/inbox/migrations.js" {
  const config: {
    journal: { entries: { idx: number; when: number; tag: string; breakpoints: boolean }[] };
    migrations: Record<string, string>;
  };
  export default config;
}

// Wrangler (and the vitest plugin) turn a `.wasm` import into a compiled module: workerd forbids compiling
// WebAssembly from bytes at runtime, so the module must come from the bundle.
declare module "*.wasm" {
  const module: WebAssembly.Module;
  export default module;
}

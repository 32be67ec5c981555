// Loaded with `node --import` into a CLI run: records every module the process resolves, and writes
// their URLs (one a line), then Node's own modules it loaded (`builtin:<id>`, from process.moduleLoadList),
// to the file HERALD_MODULE_TRACE names when the process exits. Tests use it to check which modules a
// command loads.
import { registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';

const loaded = new Set<string>();
registerHooks({
  resolve(specifier, context, nextResolve) {
    const result = nextResolve(specifier, context);
    loaded.add(result.url);
    return result;
  },
});
process.on('exit', () => {
  const builtins = (process as unknown as { moduleLoadList: string[] }).moduleLoadList
    .filter((m) => m.startsWith('NativeModule '))
    .map((m) => `builtin:${m.slice('NativeModule '.length)}`);
  writeFileSync(process.env.HERALD_MODULE_TRACE!, [...loaded, ...builtins].join('\n'));
});

// Loaded with `node --import` into a CLI run: records every module the process resolves, and writes
// their URLs (one a line) to the file HERALD_MODULE_TRACE names when the process exits. Tests use it
// to check which modules a command loads.
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
process.on('exit', () => writeFileSync(process.env.HERALD_MODULE_TRACE!, [...loaded].join('\n')));

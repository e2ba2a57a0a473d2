'use strict';
// Verdict is published as ES modules. `require('verdict/...')` from a
// CommonJS project works where Node can require() an ES module (Node 20.19+
// and 22.12+ do by default); on an older Node this says what to write instead
// of Node's bare ERR_REQUIRE_ESM.
module.exports = function requireEsm(load, entry, example) {
  try {
    return load();
  } catch (err) {
    if (err && (err.code === 'ERR_REQUIRE_ESM' || err.code === 'ERR_REQUIRE_ASYNC_MODULE')) {
      throw new Error(
        `${entry} is an ES module and this Node (${process.version}) cannot require() it: ` +
          `from CommonJS use \`const { ${example} } = await import('${entry}')\`, ` +
          `or in an ES module (a .mjs file, or "type": "module" in package.json) \`import { ${example} } from '${entry}'\`; ` +
          'Node 20.19 or later can require() it as it is',
      );
    }
    throw err;
  }
};

'use strict';
// require('verdict/server') from CommonJS: see require-esm.cjs.
module.exports = require('./require-esm.cjs')(() => require('../dist/node/index.js'), 'verdict/server', 'startNode');

'use strict';
// require('verdict/outbox') from CommonJS: see require-esm.cjs.
module.exports = require('./require-esm.cjs')(() => require('../dist/outbox/index.js'), 'verdict/outbox', 'enqueue');

'use strict';
// require('verdict/client') from CommonJS: see require-esm.cjs.
module.exports = require('./require-esm.cjs')(
  () => require('../dist/client/index.js'),
  'verdict/client',
  'VerdictClient',
);

'use strict';
// require('verdict/participant/postgres') from CommonJS: see require-esm.cjs.
module.exports = require('./require-esm.cjs')(
  () => require('../dist/participant/postgres-index.js'),
  'verdict/participant/postgres',
  'PostgresResource',
);

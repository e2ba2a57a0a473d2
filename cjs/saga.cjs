'use strict';
// require('verdict/saga') from CommonJS: see require-esm.cjs.
module.exports = require('./require-esm.cjs')(
  () => require('../dist/saga/index.js'),
  'verdict/saga',
  'startStepService',
);

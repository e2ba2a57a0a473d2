'use strict';
// require('verdict/participant') from CommonJS: see require-esm.cjs.
module.exports = require('./require-esm.cjs')(
  () => require('../dist/participant/index.js'),
  'verdict/participant',
  'startParticipant',
);

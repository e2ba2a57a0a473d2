// `verdict/server`: a node in your own process (what `verdict node` runs):
// load a config the way the CLI does (file, then VERDICT_* variables, then
// --set overrides) and start the node with a pino logger.
export { startNode, StartupError, type NodeFailure, type RunningNode } from './node.ts';
export {
  loadConfig,
  parseConfig,
  ConfigError,
  type NodeConfig,
  type NodeTlsConfig,
  type ConfigOverrides,
} from './config.ts';
export { createLogger } from './logger.ts';

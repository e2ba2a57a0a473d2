// A node's config file as the config tests start from: n1 of a three-node
// cluster on loopback, with only the required keys.

export const N1_CONFIG = {
  clusterId: 'c1',
  nodeId: 'n1',
  listen: '127.0.0.1:7001',
  dataDir: 'data/n1',
  peers: { n1: '127.0.0.1:7001', n2: '127.0.0.1:7002', n3: '127.0.0.1:7003' },
};

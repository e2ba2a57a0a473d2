import * as grpc from '@grpc/grpc-js';
import { readFileSync } from 'node:fs';
import { TestCa, certDir } from '/work/main/test/tls-certs.ts';
import { checkServerIdentity } from 'node:tls';
const dir = certDir();
const ca = TestCa.create(dir, 'ca'); const rogue = TestCa.create(dir, 'rogue');
const n1 = ca.issue('n1', { ou: 'c1' }); const alice = ca.issue('alice'); const bad = rogue.issue('n3', { ou: 'c1' });
const r = (p: string) => readFileSync(p);
const server = new grpc.Server();
server.addService({ Ping: { path: '/x.X/Ping', requestStream: false, responseStream: false, requestSerialize: (b: Buffer) => b, requestDeserialize: (b: Buffer) => b, responseSerialize: (b: Buffer) => b, responseDeserialize: (b: Buffer) => b } } as any, {
  Ping: (call: any, cb: any) => { const a = call.getAuthContext(); cb(null, Buffer.from(JSON.stringify({ t: a.transportSecurityType, s: a.sslPeerCertificate?.subject, i: a.sslPeerCertificate?.issuer?.CN }))); } });
const port = await new Promise<number>((res, rej) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createSsl(r(ca.cert), [{ cert_chain: r(n1.cert), private_key: r(n1.key) }], true), (e, p) => e ? rej(e) : res(p)));
async function ping(name: string, creds: grpc.ChannelCredentials) {
  const c = new grpc.Client(`127.0.0.1:${port}`, creds);
  await new Promise<void>((res) => c.makeUnaryRequest('/x.X/Ping', (b: Buffer) => b, (b: Buffer) => b, Buffer.alloc(0), { deadline: Date.now() + 3000 }, (err, v) => { console.log(name, err ? `${err.code} ${err.details}` : v!.toString()); res(); }));
  c.close();
}
await ping('good', grpc.credentials.createSsl(r(ca.cert), r(alice.key), r(alice.cert)));
await ping('nocert', grpc.credentials.createSsl(r(ca.cert)));
await ping('roguecert', grpc.credentials.createSsl(r(ca.cert), r(bad.key), r(bad.cert)));
await ping('wrongca', grpc.credentials.createSsl(r(rogue.cert), r(alice.key), r(alice.cert)));
await ping('insecure', grpc.credentials.createInsecure());
await ping('idcheck', grpc.credentials.createSsl(r(ca.cert), r(alice.key), r(alice.cert), { checkServerIdentity: (h, cert) => checkServerIdentity(h, cert) ?? (cert.subject.CN !== 'n2' ? new Error(`peer cert is CN=${cert.subject.CN}, expected n2`) : undefined) }));
server.forceShutdown();
const plain = new grpc.Server();
const pport = await new Promise<number>((res, rej) => plain.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => e ? rej(e) : res(p)));
for (const [name, target] of [['tls->plain', `127.0.0.1:${pport}`], ['refused', '127.0.0.1:1']] as const) {
  const c = new grpc.Client(target, grpc.credentials.createSsl(r(ca.cert), r(alice.key), r(alice.cert)));
  await new Promise<void>((res) => c.makeUnaryRequest('/x.X/Ping', (b: Buffer) => b, (b: Buffer) => b, Buffer.alloc(0), { deadline: Date.now() + 3000 }, (err) => { console.log(name, err?.code, err?.details); res(); }));
  c.close();
}
plain.forceShutdown();

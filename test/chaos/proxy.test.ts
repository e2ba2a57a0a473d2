// The chaos test's link proxy on loopback: it forwards, drops (blackhole),
// resets, heals, and cuts one direction without the other.
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { LinkProxy, LinkTable } from './proxy.ts';

const servers: Server[] = [];
const proxies: LinkProxy[] = [];
afterEach(async () => {
  await Promise.all(proxies.splice(0).map((p) => p.close()));
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** An echo server on a free loopback port; returns its address. */
async function echo(): Promise<string> {
  const s = createServer((c) => c.on('error', () => {}).pipe(c));
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const a = s.address();
  if (a === null || typeof a === 'string') throw new Error('no port');
  return `127.0.0.1:${a.port}`;
}

function connect(address: string): Promise<Socket> {
  const [host, port] = address.split(':');
  return new Promise((resolve, reject) => {
    const s = createConnection({ host, port: Number(port) }, () => resolve(s));
    s.once('error', reject);
  });
}

/** Sends `text` and resolves with what comes back, or with the socket's end ('closed: CODE'). */
function roundTrip(s: Socket, text: string): Promise<string> {
  return new Promise((resolve) => {
    let got = '';
    s.on('data', (b: Buffer) => {
      got += b.toString();
      if (got.length >= text.length) resolve(got);
    });
    s.once('error', (e: NodeJS.ErrnoException) => resolve(`closed: ${e.code}`));
    s.once('close', () => resolve(`closed: ${got}`));
    s.write(text);
  });
}

async function until(what: string, f: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !f(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!f()) throw new Error(`timed out waiting for ${what}`);
}

describe('LinkProxy', () => {
  it('forwards, drops while blackholed, and forwards again on a new connection after healing', async () => {
    const p = await LinkProxy.start('a', 'b', await echo());
    proxies.push(p);
    const s1 = await connect(p.address);
    expect(await roundTrip(s1, 'hello')).toBe('hello');

    p.set('blackhole');
    const s2 = await connect(p.address);
    s2.write('lost-in-transit');
    s1.write('also-lost');
    await until('the bytes to be dropped', () => p.droppedBytes >= 'lost-in-transit'.length + 'also-lost'.length);
    // Healing closes the connections that lost bytes: their streams are broken.
    const closed = new Promise<void>((r) => s1.once('close', () => r()));
    s1.on('error', () => {});
    p.heal();
    await closed;
    s2.destroy();
    const s3 = await connect(p.address);
    expect(await roundTrip(s3, 'back')).toBe('back');
    s3.destroy();
  });

  it('resets connections, old and new, in reset mode', async () => {
    const p = await LinkProxy.start('a', 'b', await echo());
    proxies.push(p);
    const s1 = await connect(p.address);
    const ended = roundTrip(s1, '');
    p.set('reset');
    expect(await ended).toMatch(/^closed/);
    const s2 = await connect(p.address).catch((e: NodeJS.ErrnoException) => e);
    if (!(s2 instanceof Error)) expect(await roundTrip(s2, 'x')).toMatch(/^closed/);
    expect(p.resets).toBeGreaterThanOrEqual(2);
  });

  it('refuses a target outside loopback', async () => {
    await expect(LinkProxy.start('a', 'b', '10.0.0.1:80')).rejects.toThrow(/127\.0\.0\.0\/8/);
  });
});

describe('LinkTable', () => {
  it('cuts one direction of a pair and leaves the other', async () => {
    const t = new LinkTable();
    const target = await echo();
    try {
      for (const [from, to] of [
        ['a', 'b'],
        ['b', 'a'],
        ['a', 'c'],
        ['c', 'a'],
      ])
        await t.dialPeer(from, to, target);
      t.cutOneWay(['a'], ['b', 'c'], 'blackhole');
      expect(
        t
          .all()
          .map((p) => `${p.from}>${p.to}:${p.current}`)
          .sort(),
      ).toEqual(['a>b:blackhole', 'a>c:blackhole', 'b>a:pass', 'c>a:pass']);
      t.healAll();
      t.cut(['a'], ['b']);
      expect(
        t
          .all()
          .map((p) => `${p.from}>${p.to}:${p.current}`)
          .sort(),
      ).toEqual(['a>b:blackhole', 'a>c:pass', 'b>a:blackhole', 'c>a:pass']);
      await expect(t.dialPeer('a', 'b', target)).rejects.toThrow(/already has a proxy/);
    } finally {
      await t.close();
    }
  });
});

/**
 * A response deserializer for CRI's list RPCs that decodes only the items it has not seen.
 *
 * PLEG lists every sandbox and container each second (ListPodSandbox, ListContainers), and on a
 * steady node the answers hold the same items, byte for byte, every time. Decoding them again
 * (protobufjs decode, then toObject: strings, label maps, 64-bit timestamps) was the largest CPU
 * cost of a 110-pod node after garbage collection, and most of that garbage. Here the answer's
 * top level is read (field 1, the repeated item), each item's bytes are looked up among the items
 * seen lately, and only bytes not seen go through the generated decoder. An item that changed
 * (a container that exited) has new bytes, so it is decoded afresh.
 *
 * Go's protobuf encoder writes a map's entries in random order, so the same labels come back in
 * another order at each answer: an item's key is its fields as they came, with the entries of
 * its map fields (labels, annotations) sorted, which is the same message.
 *
 * The decoded items are shared between answers: callers must not change them (cri-runtime.ts
 * maps them into objects of its own). An answer this reader does not expect (another field, a
 * malformed frame) goes whole through the generated decoder, which reports it as before.
 */

/** How long an item not seen in any answer stays cached (a relist sees every item each second). */
const KEEP_UNSEEN_MS = 30_000;

interface Entry {
  value: unknown;
  seenAt: number;
}

export interface ListItemCacheStats {
  /** Items taken from the cache. */
  hits: number;
  /** Items decoded. */
  decoded: number;
  /** Answers decoded whole (not in the expected shape). */
  fallbacks: number;
}

/**
 * Wraps a list RPC's response deserializer. `field` is the name of its repeated item field in
 * the decoded answer (`containers` of ListContainersResponse, `items` of ListPodSandboxResponse),
 * which must be field number 1 and the answer's only field.
 */
export function cachingListDeserializer(
  decode: (buf: Buffer) => any,
  field: string,
  /** The item's map fields by number (their entries' order carries no meaning). */
  mapFields: readonly number[],
  now: () => number = Date.now,
): ((buf: Buffer) => any) & { stats: ListItemCacheStats } {
  const cache = new Map<string, Entry>();
  const stats: ListItemCacheStats = { hits: 0, decoded: 0, fallbacks: 0 };
  let sweptAt = now();

  const decodeOne = (buf: Buffer, start: number, end: number): unknown => {
    // The item alone, framed as an answer of one item: the generated decoder does the rest.
    const len = end - start;
    const framed = Buffer.allocUnsafe(1 + varintLength(len) + len);
    framed[0] = 0x0a; // field 1, length-delimited
    const at = writeVarint(framed, 1, len);
    buf.copy(framed, at, start, end);
    const items = decode(framed)?.[field];
    if (!Array.isArray(items) || items.length !== 1) throw new Error(`one ${field} item did not decode alone`);
    return items[0];
  };

  const deserialize = (buf: Buffer): any => {
    const t = now();
    const items: unknown[] = [];
    let pos = 0;
    try {
      while (pos < buf.length) {
        const tag = readVarint(buf, pos);
        if (!tag || tag.value !== 0x0a) throw new Error('unexpected field');
        const len = readVarint(buf, tag.next);
        if (!len) throw new Error('bad length');
        const start = len.next;
        const end = start + len.value;
        if (end > buf.length) throw new Error('truncated');
        const key = itemKey(buf, start, end, mapFields);
        let entry = cache.get(key);
        if (entry) {
          stats.hits++;
          entry.seenAt = t;
        } else {
          entry = { value: decodeOne(buf, start, end), seenAt: t };
          stats.decoded++;
          cache.set(key, entry);
        }
        items.push(entry.value);
        pos = end;
      }
    } catch {
      stats.fallbacks++;
      return decode(buf);
    }
    if (t - sweptAt >= KEEP_UNSEEN_MS) {
      for (const [key, entry] of cache) if (t - entry.seenAt >= KEEP_UNSEEN_MS) cache.delete(key);
      sweptAt = t;
    }
    return { [field]: items };
  };
  return Object.assign(deserialize, { stats });
}

/**
 * The item's bytes as a string, its map fields' entries moved to the end in sorted order: equal
 * for equal messages whatever order the encoder wrote the map entries in. Each field keeps its
 * own tag and length, so the key is itself an encoding of the message. Throws on a wire type it
 * cannot skip (the caller then decodes the whole answer).
 */
function itemKey(buf: Buffer, start: number, end: number, mapFields: readonly number[]): string {
  let plain = '';
  let entries: string[] | undefined;
  // Runs of other fields are cut out whole (one string per run, not per field).
  let runStart = start;
  let pos = start;
  while (pos < end) {
    const fieldStart = pos;
    const tag = readVarint(buf, pos);
    if (!tag) throw new Error('bad tag');
    pos = tag.next;
    switch (tag.value & 7) {
      case 0: {
        // A varint may be up to 10 bytes (negative int64): skip to its last byte.
        while (pos < end && buf[pos]! >= 0x80) pos++;
        pos++;
        break;
      }
      case 1: pos += 8; break;
      case 5: pos += 4; break;
      case 2: {
        const len = readVarint(buf, pos);
        if (!len) throw new Error('bad length');
        pos = len.next + len.value;
        break;
      }
      default: throw new Error('unexpected wire type');
    }
    if (pos > end) throw new Error('truncated field');
    if (mapFields.includes(tag.value >>> 3)) {
      if (fieldStart > runStart) plain += buf.toString('latin1', runStart, fieldStart);
      (entries ??= []).push(buf.toString('latin1', fieldStart, pos));
      runStart = pos;
    }
  }
  if (end > runStart) plain += buf.toString('latin1', runStart, end);
  return entries ? plain + entries.sort().join('') : plain;
}

/** A base-128 varint of at most 32 bits at `pos`, or undefined (longer, or past the end). */
function readVarint(buf: Buffer, pos: number): { value: number; next: number } | undefined {
  let value = 0;
  for (let i = 0; i < 5; i++) {
    if (pos + i >= buf.length) return undefined;
    const b = buf[pos + i]!;
    value += (b & 0x7f) * 2 ** (7 * i);
    if (b < 0x80) return value <= 0xffffffff ? { value, next: pos + i + 1 } : undefined;
  }
  return undefined;
}

function varintLength(n: number): number {
  let len = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    len++;
  }
  return len;
}

/** Writes `n` as a varint at `pos`; returns the position after it. */
function writeVarint(buf: Buffer, pos: number, n: number): number {
  while (n >= 0x80) {
    buf[pos++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  buf[pos++] = n;
  return pos;
}

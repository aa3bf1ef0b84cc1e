/**
 * HPACK (RFC 7541), the header compression of HTTP/2: a decoder with its dynamic table and
 * Huffman decoding, and an encoder that writes literals only (never indexed, never Huffman), so
 * what it writes needs no table state on the other side. Written for h2-authority.ts, which
 * re-encodes the request headers of gRPC clients; everything is bounded (table size, integer
 * size, header count), as the input comes from another process.
 */

/** The static table (RFC 7541 Appendix A), index 1 first. */
const STATIC: ReadonlyArray<readonly [string, string]> = [
  [':authority', ''], [':method', 'GET'], [':method', 'POST'], [':path', '/'], [':path', '/index.html'], [':scheme', 'http'], [':scheme', 'https'],
  [':status', '200'], [':status', '204'], [':status', '206'], [':status', '304'], [':status', '400'], [':status', '404'], [':status', '500'],
  ['accept-charset', ''], ['accept-encoding', 'gzip, deflate'], ['accept-language', ''], ['accept-ranges', ''], ['accept', ''],
  ['access-control-allow-origin', ''], ['age', ''], ['allow', ''], ['authorization', ''], ['cache-control', ''], ['content-disposition', ''],
  ['content-encoding', ''], ['content-language', ''], ['content-length', ''], ['content-location', ''], ['content-range', ''], ['content-type', ''],
  ['cookie', ''], ['date', ''], ['etag', ''], ['expect', ''], ['expires', ''], ['from', ''], ['host', ''], ['if-match', ''], ['if-modified-since', ''],
  ['if-none-match', ''], ['if-range', ''], ['if-unmodified-since', ''], ['last-modified', ''], ['link', ''], ['location', ''], ['max-forwards', ''],
  ['proxy-authenticate', ''], ['proxy-authorization', ''], ['range', ''], ['referer', ''], ['refresh', ''], ['retry-after', ''], ['server', ''],
  ['set-cookie', ''], ['strict-transport-security', ''], ['transfer-encoding', ''], ['user-agent', ''], ['vary', ''], ['via', ''], ['www-authenticate', ''],
];

/**
 * The bit length of each symbol's Huffman code (RFC 7541 Appendix B; symbol 256 is EOS). The
 * code is canonical: codes follow from the lengths, shortest first, then by symbol.
 */
const HUFFMAN_LENGTHS = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
  6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7,
  7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5,
  6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23,
  23, 21, 22, 23, 22, 23, 23, 24, 22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20,
  22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24, 21, 21,
  26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27,
  27, 27, 27, 27, 26, 30,
];
const EOS = 256;

/** Canonical decoding tables: per length, the first code, how many codes, and where their symbols start. */
const HUFFMAN = (() => {
  const symbols = [...HUFFMAN_LENGTHS.keys()].sort((a, b) => HUFFMAN_LENGTHS[a]! - HUFFMAN_LENGTHS[b]! || a - b);
  const first = new Array<number>(31).fill(0);
  const count = new Array<number>(31).fill(0);
  const offset = new Array<number>(31).fill(0);
  for (const s of symbols) count[HUFFMAN_LENGTHS[s]!]!++;
  let code = 0;
  let at = 0;
  for (let len = 1; len <= 30; len++) {
    first[len] = code;
    offset[len] = at;
    code = (code + count[len]!) * 2;
    at += count[len]!;
  }
  return { symbols, first, count, offset };
})();

export class HpackError extends Error {
  constructor(message: string) {
    super(`HPACK: ${message}`);
    this.name = 'HpackError';
  }
}

function huffmanDecode(data: Buffer): string {
  const out: number[] = [];
  let code = 0;
  let len = 0;
  for (const byte of data) {
    for (let bit = 7; bit >= 0; bit--) {
      code = code * 2 + ((byte >> bit) & 1);
      len++;
      if (len > 30) throw new HpackError('a Huffman code longer than 30 bits');
      const i = code - HUFFMAN.first[len]!;
      if (HUFFMAN.count[len]! > 0 && i >= 0 && i < HUFFMAN.count[len]!) {
        const sym = HUFFMAN.symbols[HUFFMAN.offset[len]! + i]!;
        if (sym === EOS) throw new HpackError('EOS in a Huffman string');
        out.push(sym);
        code = 0;
        len = 0;
      }
    }
  }
  // What is left is padding: at most 7 bits, all ones (a prefix of EOS).
  if (len > 7 || code !== 2 ** len - 1) throw new HpackError('bad Huffman padding');
  return Buffer.from(out).toString('latin1');
}

/** Reads HPACK's prefixed integers and strings from one header block. */
class Reader {
  pos = 0;
  constructor(private readonly buf: Buffer) {}

  get done(): boolean {
    return this.pos >= this.buf.length;
  }

  peek(): number {
    return this.buf[this.pos]!;
  }

  integer(prefixBits: number): number {
    if (this.done) throw new HpackError('truncated integer');
    const max = 2 ** prefixBits - 1;
    let value = this.buf[this.pos++]! & max;
    if (value < max) return value;
    let shift = 0;
    for (;;) {
      if (this.done) throw new HpackError('truncated integer');
      const b = this.buf[this.pos++]!;
      value += (b & 0x7f) * 2 ** shift;
      shift += 7;
      if (value > 2 ** 28) throw new HpackError('an integer beyond 2^28');
      if ((b & 0x80) === 0) return value;
    }
  }

  string(maxLength: number): string {
    if (this.done) throw new HpackError('truncated string');
    const huffman = (this.peek() & 0x80) !== 0;
    const length = this.integer(7);
    if (length > maxLength) throw new HpackError(`a string of ${length} bytes (at most ${maxLength})`);
    if (this.pos + length > this.buf.length) throw new HpackError('truncated string');
    const raw = this.buf.subarray(this.pos, this.pos + length);
    this.pos += length;
    return huffman ? huffmanDecode(raw) : raw.toString('latin1');
  }
}

/** Header names and values as latin1 strings (one byte per character, as on the wire). */
export type HeaderList = Array<[string, string]>;

/** Decodes the header blocks of one direction of one connection (the dynamic table lives across blocks). */
export class HpackDecoder {
  /** Newest first. */
  private readonly dynamic: Array<[string, string]> = [];
  private size = 0;
  private maxSize = 4096;

  constructor(private readonly limits: { maxTableSize: number; maxHeaders: number; maxStringLength: number } = { maxTableSize: 65536, maxHeaders: 1000, maxStringLength: 65536 }) {}

  decode(block: Buffer): HeaderList {
    const r = new Reader(block);
    const out: HeaderList = [];
    while (!r.done) {
      const b = r.peek();
      if (b & 0x80) {
        out.push(this.entry(r.integer(7)));
      } else if ((b & 0xc0) === 0x40) {
        const field = this.literal(r, 6);
        out.push(field);
        this.add(field);
      } else if ((b & 0xe0) === 0x20) {
        const size = r.integer(5);
        if (size > this.limits.maxTableSize) throw new HpackError(`a table size of ${size} (at most ${this.limits.maxTableSize})`);
        this.maxSize = size;
        this.evict();
      } else {
        out.push(this.literal(r, 4));
      }
      if (out.length > this.limits.maxHeaders) throw new HpackError(`more than ${this.limits.maxHeaders} headers`);
    }
    return out;
  }

  private entry(index: number): [string, string] {
    if (index === 0) throw new HpackError('index 0');
    if (index <= STATIC.length) return [...STATIC[index - 1]!];
    const e = this.dynamic[index - STATIC.length - 1];
    if (!e) throw new HpackError(`index ${index} is beyond the table`);
    return [...e];
  }

  private literal(r: Reader, prefixBits: number): [string, string] {
    const index = r.integer(prefixBits);
    const name = index === 0 ? r.string(this.limits.maxStringLength) : this.entry(index)[0];
    return [name, r.string(this.limits.maxStringLength)];
  }

  private add(field: [string, string]): void {
    this.dynamic.unshift(field);
    this.size += field[0].length + field[1].length + 32;
    this.evict();
  }

  private evict(): void {
    while (this.size > this.maxSize && this.dynamic.length > 0) {
      const [n, v] = this.dynamic.pop()!;
      this.size -= n.length + v.length + 32;
    }
  }
}

function encodeInteger(value: number, prefixBits: number, firstByte: number, out: number[]): void {
  const max = 2 ** prefixBits - 1;
  if (value < max) {
    out.push(firstByte | value);
    return;
  }
  out.push(firstByte | max);
  let rest = value - max;
  while (rest >= 128) {
    out.push((rest % 128) + 128);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
}

function encodeString(s: string, out: number[]): void {
  const bytes = Buffer.from(s, 'latin1');
  encodeInteger(bytes.length, 7, 0x00, out);
  for (const b of bytes) out.push(b);
}

/** Encodes headers as literals without indexing (the static table names them where it can): no state on either side. */
export function encodeLiterals(headers: HeaderList): Buffer {
  const out: number[] = [];
  for (const [name, value] of headers) {
    const index = STATIC.findIndex(([n]) => n === name) + 1;
    if (index > 0) encodeInteger(index, 4, 0x00, out);
    else {
      out.push(0x00);
      encodeString(name, out);
    }
    encodeString(value, out);
  }
  return Buffer.from(out);
}

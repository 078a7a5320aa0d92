/**
 * Reading Kafka wire primitives from one frame (docs/kafka.md#the-codec): big-endian integers,
 * zigzag varints, (compact) strings, bytes and arrays, tagged fields. Every read checks the
 * bounds and throws {@link ProtocolError} on a short or malformed frame; callers close the
 * connection on it.
 */

/** A frame that does not parse: the connection is closed (docs/kafka.md#connection-layer). */
export class ProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProtocolError';
  }
}

/** A cursor over one frame's bytes. */
export class Reader {
  offset: number;

  constructor(readonly buf: Buffer, offset = 0) {
    this.offset = offset;
  }

  get remaining(): number {
    return this.buf.length - this.offset;
  }

  private need(n: number): void {
    if (n < 0 || this.offset + n > this.buf.length) throw new ProtocolError(`frame too short: need ${n} bytes at ${this.offset}`);
  }

  int8(): number {
    this.need(1);
    return this.buf.readInt8(this.offset++);
  }

  bool(): boolean {
    return this.int8() !== 0;
  }

  int16(): number {
    this.need(2);
    const v = this.buf.readInt16BE(this.offset);
    this.offset += 2;
    return v;
  }

  int32(): number {
    this.need(4);
    const v = this.buf.readInt32BE(this.offset);
    this.offset += 4;
    return v;
  }

  uint32(): number {
    this.need(4);
    const v = this.buf.readUInt32BE(this.offset);
    this.offset += 4;
    return v;
  }

  /** A signed 64-bit integer as a JS number (offsets and times fit in 2^53). */
  int64(): number {
    this.need(8);
    const v = this.buf.readBigInt64BE(this.offset);
    this.offset += 8;
    return Number(v);
  }

  /** A signed 64-bit integer as a bigint (producer ids). */
  int64n(): bigint {
    this.need(8);
    const v = this.buf.readBigInt64BE(this.offset);
    this.offset += 8;
    return v;
  }

  uuid(): Buffer {
    return this.raw(16);
  }

  /** Unsigned LEB128 varint up to 35 bits (lengths, counts). */
  uvarint(): number {
    let result = 0;
    let shift = 0;
    for (;;) {
      this.need(1);
      const b = this.buf[this.offset++]!;
      result += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return result;
      shift += 7;
      if (shift > 28) throw new ProtocolError('varint too long');
    }
  }

  /** Zigzag-encoded signed varint (32-bit). */
  varint(): number {
    const u = this.uvarint();
    return u % 2 === 0 ? u / 2 : -(u + 1) / 2;
  }

  /**
   * Zigzag-encoded signed varlong, as a JS number (timestamps fit in 2^53). Up to 7 bytes (49 bits,
   * every record's timestamp delta in practice) are read as numbers; longer ones through bigint.
   */
  varlong(): number {
    const start = this.offset;
    let u = 0;
    for (let i = 0; i < 7; i++) {
      this.need(1);
      const b = this.buf[this.offset++]!;
      u += (b & 0x7f) * 2 ** (7 * i);
      if ((b & 0x80) === 0) return u % 2 === 0 ? u / 2 : -(u + 1) / 2;
    }
    this.offset = start;
    return this.varlongBig();
  }

  private varlongBig(): number {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      this.need(1);
      const b = BigInt(this.buf[this.offset++]!);
      result |= (b & 0x7fn) << shift;
      if ((b & 0x80n) === 0n) break;
      shift += 7n;
      if (shift > 63n) throw new ProtocolError('varlong too long');
    }
    return Number((result >> 1n) ^ -(result & 1n));
  }

  /** `n` raw bytes (a view on the frame, not a copy). */
  raw(n: number): Buffer {
    this.need(n);
    const v = this.buf.subarray(this.offset, this.offset + n);
    this.offset += n;
    return v;
  }

  string(): string {
    const s = this.nullableString();
    if (s === null) throw new ProtocolError('null where a string is required');
    return s;
  }

  nullableString(): string | null {
    const n = this.int16();
    if (n === -1) return null;
    if (n < 0) throw new ProtocolError(`string length ${n}`);
    return this.raw(n).toString('utf8');
  }

  compactString(): string {
    const s = this.compactNullableString();
    if (s === null) throw new ProtocolError('null where a string is required');
    return s;
  }

  compactNullableString(): string | null {
    const n = this.uvarint() - 1;
    if (n < 0) return null;
    return this.raw(n).toString('utf8');
  }

  nullableBytes(): Buffer | null {
    const n = this.int32();
    if (n === -1) return null;
    if (n < 0) throw new ProtocolError(`bytes length ${n}`);
    return this.raw(n);
  }

  compactNullableBytes(): Buffer | null {
    const n = this.uvarint() - 1;
    if (n < 0) return null;
    return this.raw(n);
  }

  /** An array length: int32 (−1 = null; other negatives are refused) or, compact, uvarint − 1. Bounded by the bytes left. */
  arrayLength(compact: boolean): number {
    const n = compact ? this.uvarint() - 1 : this.int32();
    if (n < -1) throw new ProtocolError(`array length ${n}`);
    if (n > this.remaining) throw new ProtocolError(`array of ${n} elements in ${this.remaining} bytes`);
    return n;
  }

  /** Skips a tagged-field section (flexible versions). */
  skipTaggedFields(): void {
    const n = this.uvarint();
    for (let i = 0; i < n; i++) {
      this.uvarint(); // tag
      this.raw(this.uvarint());
    }
  }
}

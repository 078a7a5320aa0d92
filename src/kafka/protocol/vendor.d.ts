/** Type declarations for the pure-JS codecs used by records.ts (the packages ship none). */
declare module 'snappyjs' {
  /** Decompresses one raw snappy block; throws when its declared length exceeds `maxLength`. */
  export function uncompress(compressed: Uint8Array, maxLength?: number): Uint8Array;
  export function compress(uncompressed: Uint8Array): Uint8Array;
}

declare module 'lz4js' {
  /** Upper bound of an LZ4 frame's decompressed size, read from its header and block sizes. */
  export function decompressBound(src: Uint8Array): number;
  export function decompress(src: Uint8Array, maxSize?: number): Uint8Array;
  export function compress(src: Uint8Array, maxSize?: number): Uint8Array;
}

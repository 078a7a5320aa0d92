/** Type declarations for the pure-JS codecs used by records.ts (the packages ship none). */
declare module 'snappyjs' {
  /** Decompresses one raw snappy block; throws when its declared length exceeds `maxLength`. */
  export function uncompress(compressed: Uint8Array, maxLength?: number): Uint8Array;
  export function compress(uncompressed: Uint8Array): Uint8Array;
}

/** lz4js compresses test batches only (a devDependency); Produce decodes with lz4.ts. */
declare module 'lz4js' {
  export function compress(src: Uint8Array, maxSize?: number): Uint8Array;
}

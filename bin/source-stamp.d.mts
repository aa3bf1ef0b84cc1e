/** Types of source-stamp.mjs (plain JavaScript: the bin runs before any TypeScript loader). */
export declare const BUILD_INPUTS: readonly string[];
export declare function sourceStamp(root: string): string;

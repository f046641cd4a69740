// Types of bench-doc.mjs (plain JavaScript for the bench; see there).

export function updateBenchDoc(doc: string, blocks: Map<string, string>): string;
export function writeBenchDoc(path: string, blocks: Map<string, string>): void;

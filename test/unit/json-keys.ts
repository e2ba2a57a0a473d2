// The keys that one JSON text repeats within an object: JSON.parse keeps the
// last silently, so a log line `{"node":"n4",…,"node":"n4"}` parses fine and
// reads differently in other tools. A small scanner, for tests.
export function duplicateKeys(text: string): string[] {
  const dups: string[] = [];
  const stack: (Set<string> | null)[] = [];
  let i = 0;
  let expectKey = false;
  while (i < text.length) {
    const ch = text[i];
    if (ch === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const s = JSON.parse(text.slice(i, j + 1)) as string;
      const top = stack[stack.length - 1];
      if (expectKey && top) {
        if (top.has(s)) dups.push(s);
        top.add(s);
        expectKey = false;
      }
      i = j + 1;
      continue;
    }
    if (ch === '{') {
      stack.push(new Set());
      expectKey = true;
    } else if (ch === '[') stack.push(null);
    else if (ch === '}' || ch === ']') stack.pop();
    else if (ch === ',') expectKey = stack[stack.length - 1] !== null && stack.length > 0;
    i++;
  }
  return dups;
}

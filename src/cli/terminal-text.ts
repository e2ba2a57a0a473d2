// Text the CLI prints that came from elsewhere (a stored abort reason, a
// gid, a node or participant id, an operator's note, an error's details)
// may hold control characters: an escape sequence in a reason could rewrite
// the line above it, set the terminal's title or write to its clipboard, and
// a newline could forge a line of output. Every such character is printed
// as a visible escape instead: \n, \r, \t, \e and \xNN for the rest of C0
// and DEL, \u{NNNN} for C1 controls and the Unicode line separators.
// Matching control characters is this regular expression's whole purpose.
// biome-ignore lint/suspicious/noControlCharactersInRegex: it finds them to escape them
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\u001b': '\\e' };

/** `text` with every control character shown as an escape; plain text comes back unchanged. */
export function printable(text: string): string {
  return text.replace(CONTROL, (c) => {
    const named = NAMED[c];
    if (named !== undefined) return named;
    const code = c.charCodeAt(0);
    return code <= 0x7f ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u{${code.toString(16)}}`;
  });
}

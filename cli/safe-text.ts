// Text from other people (usage sheets, notes, labels, submitters, reasons)
// shown on a terminal: its control characters are shown, never obeyed, so it
// cannot retitle the window, clear the screen, hide text, plant a link or
// reorder a line. docs/cli.md, "What rc prints to a terminal", states the rule.

/**
 * What a terminal would act on: C0 controls but newline and tab, DEL, C1
 * controls, and the bidi controls that reorder a line (U+061C, U+200E, U+200F,
 * U+202A–U+202E, U+2066–U+2069).
 */
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** `text` with each control written out: `\x1b` (C0, DEL, C1: two hex digits), `\u202e` (bidi: four). Nothing else changes. */
export function safeText(text: string): string {
  return text.replace(CONTROL, (c) => {
    const code = c.charCodeAt(0);
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

// Whether rendered content markup parses the same in any <div> as in the brand layout's content
// <div>, so that an email's text part can be converted from its content alone, set between stand-ins
// for the layout's text (templates/render.ts). HTML parsing depends on what is open around: an end
// tag with nothing of its own to end closes one of the layout's elements, a comment, raw-text element
// or broken tag left open swallows the layout's markup that follows, and table or document tags
// rearrange what surrounds them. So only plain, well-formed markup passes: every '<' opens a complete
// tag of a common content element, and every </div> ends a div of the content's own (the layout's
// other elements around the content are tables and the document's, whose tags are not accepted).
// Anything else is converted inside the whole layout, which is always right, only slower.

/** Content elements whose tags cannot reach past the content, nor imply the end of a layout element. */
const ACCEPTED = new Set(
  'a abbr b big blockquote br cite code del div em font h1 h2 h3 h4 h5 h6 hr i img ins kbd li mark ol p pre q s samp small span strike strong sub sup u ul var wbr'.split(
    ' ',
  ),
);
/** Void elements among them: never open, so never closed. */
const VOID = new Set(['br', 'hr', 'img', 'wbr']);
/** The parser's implied ends among them: a start tag of these ends an open p (or li) on top. */
const ENDS_P = new Set(['blockquote', 'div', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'hr', 'ol', 'p', 'pre', 'ul']);

// A start or end tag whose attributes are each separated by whitespace, valued or not, quoted or not.
const TAG = /<(\/?)([a-zA-Z][a-zA-Z0-9]*)(?:\s+[^\s"'<>/=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?)*\s*\/?>/y;

export function isSelfContained(html: string): boolean {
  // The elements the content has open, as the parser (htmlparser2) keeps them.
  const open: string[] = [];
  for (let at = html.indexOf('<'); at !== -1; at = html.indexOf('<', at)) {
    TAG.lastIndex = at;
    const tag = TAG.exec(html);
    if (!tag) return false;
    at = TAG.lastIndex;
    const name = tag[2]!.toLowerCase();
    if (!ACCEPTED.has(name)) return false;
    if (!tag[1]) {
      const ended = ENDS_P.has(name) ? 'p' : name === 'li' ? 'li' : null;
      while (ended && open.at(-1) === ended) open.pop();
      if (!VOID.has(name)) open.push(name);
      continue;
    }
    if (VOID.has(name)) continue;
    const index = open.lastIndexOf(name);
    // An end tag of nothing open is ignored by the parser (or becomes an empty p or a br), unless the
    // layout has that element open around the content: a div.
    if (index !== -1) open.length = index;
    else if (name === 'div') return false;
  }
  return true;
}

'use client';
// A usage sheet or note, rendered from Markdown. Raw HTML in the source is
// never rendered (react-markdown drops it), and what Markdown makes is
// sanitised again (rehype-sanitize, GitHub's rules: no scripts, no event
// handlers, no javascript: links), so a sheet can run nothing in the page.
import ReactMarkdown from 'react-markdown';
import rehypeSanitize from 'rehype-sanitize';

export default function Markdown({ source }: { source: string }) {
  return (
    <div className="rc-markdown text-sm leading-relaxed">
      <ReactMarkdown rehypePlugins={[rehypeSanitize]}>{source}</ReactMarkdown>
    </div>
  );
}

'use client';
// A usage sheet or note, rendered from Markdown. Raw HTML in the source is
// never rendered (react-markdown drops it), and what Markdown makes is
// sanitised again (rehype-sanitize, GitHub's rules: no scripts, no event
// handlers, no javascript: links), so a sheet can run nothing in the page.
// GitHub's Markdown (remark-gfm): tables, task lists, strikethrough, autolinks.
import ReactMarkdown from 'react-markdown';
import rehypeSanitize from 'rehype-sanitize';
import remarkGfm from 'remark-gfm';

export default function Markdown({ source }: { source: string }) {
  return (
    <div className="rc-markdown text-sm leading-relaxed">
      <ReactMarkdown remarkPlugins={[remarkGfm]} rehypePlugins={[rehypeSanitize]}>
        {source}
      </ReactMarkdown>
    </div>
  );
}

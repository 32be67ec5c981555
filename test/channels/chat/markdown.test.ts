// The chat Markdown subset in each provider's syntax: bold, italic, links, inline code, code blocks,
// bullet lists and headings, with text escaped so a variable's value adds no formatting of its own.
import { describe, expect, it } from 'vitest';
import { renderChatMarkdown } from '../../../server/channels/chat/markdown.ts';

const SOURCE = [
  '# Release',
  'Build **1.2** is _live_ see [the log](https://ci.example.test/1?a=1&b=2) or `npm run x`',
  '- first',
  '* second',
  '',
  '```',
  'if (a < b) {}',
  '```',
].join('\n');

describe('renderChatMarkdown', () => {
  it('writes Slack mrkdwn', () => {
    expect(renderChatMarkdown(SOURCE, 'slack')).toBe(
      '*Release*\n\nBuild *1.2* is _live_ see <https://ci.example.test/1?a=1&amp;b=2|the log> or `npm run x`\n\n• first\n• second\n\n```\nif (a &lt; b) {}\n```',
    );
  });

  it('writes Telegram HTML', () => {
    expect(renderChatMarkdown(SOURCE, 'telegram')).toBe(
      '<b>Release</b>\n\nBuild <b>1.2</b> is <i>live</i> see <a href="https://ci.example.test/1?a=1&amp;b=2">the log</a> or <code>npm run x</code>\n\n• first\n• second\n\n<pre>if (a &lt; b) {}</pre>',
    );
  });

  it('writes Discord and Mattermost markdown, Teams TextBlock markdown and Google Chat formatting', () => {
    expect(renderChatMarkdown(SOURCE, 'discord')).toBe(
      '## Release\n\nBuild **1.2** is *live* see [the log](https://ci.example.test/1?a=1&b=2) or `npm run x`\n\n- first\n- second\n\n```\nif (a < b) {}\n```',
    );
    expect(renderChatMarkdown(SOURCE, 'mattermost')).toContain('#### Release\n\nBuild **1.2** is _live_');
    expect(renderChatMarkdown(SOURCE, 'teams')).toBe(
      '**Release**\n\nBuild **1.2** is _live_ see [the log](https://ci.example.test/1?a=1&b=2) or npm run x\n\n- first\n- second\n\nif (a < b) {}',
    );
    expect(renderChatMarkdown(SOURCE, 'google_chat')).toContain(
      '*Release*\n\nBuild *1.2* is _live_ see <https://ci.example.test/1?a=1&b=2|the log> or `npm run x`',
    );
  });

  it('escapes what is text: no Slack mentions, no HTML, no stray markdown from values', () => {
    expect(renderChatMarkdown('Hi <!channel> & <b>you</b>', 'slack')).toBe(
      'Hi &lt;!channel&gt; &amp; &lt;b&gt;you&lt;/b&gt;',
    );
    expect(renderChatMarkdown('Hi <script> & co', 'telegram')).toBe('Hi &lt;script&gt; &amp; co');
    expect(renderChatMarkdown('a|b ~c~', 'discord')).toBe('a\\|b \\~c\\~');
    expect(renderChatMarkdown('order_id_42 and snake_case', 'slack')).toBe('order_id_42 and snake_case');
    expect(renderChatMarkdown('\\*not bold\\*', 'mattermost')).toBe('\\*not bold\\*');
    expect(renderChatMarkdown('[x](javascript:alert(1))', 'telegram')).toBe('[x](javascript:alert(1))');
  });
});

// rc mcp: the Model Context Protocol over stdio, for agent harnesses that
// start their MCP servers as local commands. Each JSON-RPC message read from
// stdin (one a line) is POSTed to the controller's /mcp (the Streamable HTTP
// transport) with the CLI's settings, and each answer written to stdout as one
// line: the tools are the controller's, so this bridge knows none of them and
// loads no SDK. stdout carries JSON-RPC alone; rc's own notices go to stderr.
import { MCP_SUBMITTER_HEADER } from '../../core/mcp-headers';
import { EXIT } from '../../core/exit-codes';
import type { Client } from '../client';
import { parseFlags } from '../flags';
import type { Body } from '../http1';
import { CliExit, err, out, usage } from '../output';

export const MCP_HELP = `usage: rc mcp

A Model Context Protocol server on stdin and stdout, for an agent harness that
starts its MCP servers as local commands. Each JSON-RPC message read from stdin
(one a line) is sent to the controller's /mcp (RC_CONTROLLER, RC_TOKEN), and
each answer is written to stdout as one line; the tools are the controller's
(docs/agents.md, "rc over MCP"). RC_SUBMITTER, when set, is who the tools act
as unless a call names someone. A controller that cannot be reached, or that
refuses the token, is that request's error (\`unauthorized: ...\`); rc mcp
goes on. It ends, exiting 0, when stdin closes.

  {"mcpServers": {"rc": {"command": "rc", "args": ["mcp"],
    "env": {"RC_CONTROLLER": "http://<controller>:8080", "RC_TOKEN": "<client token>"}}}}
`;

/** The longest a tool call may rightly take to answer: wait holds up to 60 s (server/mcp/tools.ts MAX_WAIT_S), then some. */
const TOOL_ANSWER_MS = 90_000;

/** The JSON-RPC error code of rc's refusals and of a controller out of reach (the range JSON-RPC leaves to servers). */
const RC_ERROR = -32000;

type Message = { jsonrpc?: unknown; id?: unknown; method?: unknown; result?: unknown; error?: unknown };

export async function mcp(client: Client, args: readonly string[]): Promise<number> {
  const parsed = parseFlags('mcp', args, [], false);
  if (parsed.rest.length) usage('rc mcp (it takes no arguments: it reads JSON-RPC messages on stdin)');
  await new Bridge(client, process.env.RC_SUBMITTER || null).run(process.stdin);
  return EXIT.ok;
}

class Bridge {
  /** What the server said to send on every later request: its session, and the protocol version agreed at initialize. */
  private session: string | null = null;
  private protocolVersion: string | null = null;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly client: Client,
    private readonly submitter: string | null,
  ) {}

  /** Forwards each line as it comes, several at once (an answer may overtake another: JSON-RPC's ids pair them); resolves when stdin has ended and every answer is written. */
  async run(input: NodeJS.ReadableStream): Promise<void> {
    let pending = '';
    const take = (line: string) => {
      if (!line.trim()) return;
      const p = this.forward(line).finally(() => this.inFlight.delete(p));
      this.inFlight.add(p);
    };
    await new Promise<void>((resolve, reject) => {
      input.on('data', (chunk: Buffer | string) => {
        pending += chunk.toString();
        for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n')) {
          take(pending.slice(0, nl));
          pending = pending.slice(nl + 1);
        }
      });
      input.on('end', resolve);
      input.on('error', reject);
    });
    take(pending);
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
  }

  private async forward(line: string): Promise<void> {
    let message: Message | Message[];
    try {
      message = JSON.parse(line) as Message | Message[];
    } catch {
      return this.write({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error: a line of stdin is not JSON' } });
    }
    const messages = Array.isArray(message) ? message : [message];
    // The requests among them (a notification has no id, and gets no answer).
    const ids = messages.filter((m) => m && typeof m === 'object' && 'method' in m && m.id !== undefined && m.id !== null).map((m) => m.id);
    const initialize = messages.some((m) => m?.method === 'initialize');
    try {
      const res = await this.client.request('POST', '/mcp', this.headers(), line, TOOL_ANSWER_MS);
      const session = res.headers['mcp-session-id'];
      if (session) this.session = session;
      if (res.statusCode === 202) return void (await this.client.readAll(res.body));
      const emit = (a: Message) => {
        // The version agreed at initialize goes on every later request, as the transport asks.
        const version = initialize ? (a.result as { protocolVersion?: unknown } | undefined)?.protocolVersion : undefined;
        if (typeof version === 'string') this.protocolVersion = version;
        this.write(a);
      };
      if ((res.headers['content-type'] ?? '').startsWith('text/event-stream')) await this.events(res.body, emit);
      else for (const a of this.answersOf(res.statusCode, (await this.client.readAll(res.body)).toString('utf8'), ids)) emit(a);
    } catch (e) {
      // Anything else is a connection broken mid-event-stream (the CLI's own reads fail as a CliExit).
      const code = e instanceof CliExit ? (e.code ?? 'error') : 'unreachable';
      const why = e instanceof CliExit ? (e.sentence ?? e.message) : `the connection to the controller broke mid-answer (${(e as Error).message})`;
      const sentence = `${code}: ${why}`;
      // A notification has no one to answer: the harness's log (stderr) is told.
      if (!ids.length) err(`rc mcp: ${sentence}\n`);
      for (const id of ids) this.write({ jsonrpc: '2.0', id, error: { code: RC_ERROR, message: sentence, data: { code } } });
    }
  }

  private headers(): Record<string, string> {
    return {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(this.session ? { 'mcp-session-id': this.session } : {}),
      ...(this.protocolVersion ? { 'mcp-protocol-version': this.protocolVersion } : {}),
      ...(this.submitter ? { [MCP_SUBMITTER_HEADER]: this.submitter } : {}),
    };
  }

  /** A JSON answer: JSON-RPC (one message or several) as it is; rc's refusal (`{"error":{"code","message"}}`) is thrown as the CLI's error. */
  private answersOf(status: number, text: string, ids: unknown[]): Message[] {
    let body: unknown = null;
    try {
      body = JSON.parse(text);
    } catch {
      /* not JSON: below */
    }
    const list = Array.isArray(body) ? body : [body];
    if (list.length && list.every((m) => m && typeof m === 'object' && (m as Message).jsonrpc === '2.0'))
      // A refusal the transport could not pair with a request (id null) is this one's, when there is one.
      return (list as Message[]).map((m) => (m.id === null && ids.length === 1 ? { ...m, id: ids[0] } : m));
    const refusal = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
    if (refusal && typeof refusal.code === 'string' && typeof refusal.message === 'string')
      throw new CliExit(EXIT.error, refusal.message, refusal.code, false, refusal.message);
    throw new CliExit(EXIT.error, '', 'error', false, `the controller answered HTTP ${status} to /mcp with no JSON-RPC; is RC_CONTROLLER an rc controller?`);
  }

  /** An SSE answer: each event's data is one JSON-RPC message, written as it arrives. */
  private events(body: Body, emit: (m: Message) => void): Promise<void> {
    return new Promise((resolve, reject) => {
      let pending = '';
      let data: string[] = [];
      const line = (l: string) => {
        if (l === '') {
          // An event ends at a blank line; its data lines joined are the message.
          if (data.length) {
            try {
              emit(JSON.parse(data.join('\n')) as Message);
            } catch {
              err('rc mcp: an event from the controller was not JSON; it was left out\n');
            }
          }
          data = [];
        } else if (l.startsWith('data:')) data.push(l.slice(l[5] === ' ' ? 6 : 5));
      };
      body.consume({
        data: (c) => {
          pending += c.toString('utf8');
          for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n')) {
            line(pending.slice(0, nl).replace(/\r$/, ''));
            pending = pending.slice(nl + 1);
          }
        },
        end: () => {
          line(pending);
          line('');
          resolve();
        },
        error: reject,
      });
    });
  }

  /** One JSON-RPC message a line (JSON escapes every control character, so out() passes it as it is). */
  private write(message: unknown): void {
    out(`${JSON.stringify(message)}\n`);
  }
}

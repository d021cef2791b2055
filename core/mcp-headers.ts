// The one header rc adds to MCP's own (rc mcp, the stdio bridge, sends it; the
// controller's /mcp reads it): who the tools act as unless a call names
// someone (RC_SUBMITTER). A bound token's rule still holds: the API routes
// refuse a name outside its binding, as they do for the CLI.
export const MCP_SUBMITTER_HEADER = 'x-rc-submitter';

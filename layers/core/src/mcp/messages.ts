/** The MCP sync queue's name and message, apart so that wiring it does not import the MCP SDK. */
export const MCP_SYNC_QUEUE = 'mcp-sync';

export interface McpSyncMessage {
  organisation_id: string;
  mcp_integration_id: string;
}

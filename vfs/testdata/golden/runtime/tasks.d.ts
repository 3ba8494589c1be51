// A program runs the same as an MCP task: there is nothing to call. The
// client asks for a task (tools/call of execute_code with params.task) and
// polls for the record; see runtime/tasks.md.

/** What tasks/get tells the client of a task run. */
interface TaskStatus {
  taskId: string;
  status: "working" | "input_required" | "completed" | "failed" | "cancelled";
  /** How long the task and its record are kept, in ms. */
  ttl: number;
}

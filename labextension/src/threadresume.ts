/** What the panel says after a LangGraph interrupt's approval is decided. */

/**
 * How a LangGraph thread goes on once its interrupt is decided (its gate is
 * `langgraph:<thread>:<node>`): the kernel that owns the graph resumes it.
 */
export function threadResume(gate: string): string {
  const match =
    /^langgraph:(.+):[^:]*$/.exec(gate) ?? /^langgraph:([^:]+)$/.exec(gate);
  if (!match) {
    return '';
  }
  const thread = JSON.stringify(match[1]);
  return (
    ` The thread resumes when its kernel runs resume_approved(graph, run, ${thread})` +
    ' (at once where resume_on_approval(graph, run) is on).'
  );
}

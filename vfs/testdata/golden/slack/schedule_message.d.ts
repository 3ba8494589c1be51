declare namespace slack {
  /** Schedule a message to be posted to a channel at a future time. */
  function schedule_message(args: ScheduleMessageArgs): Promise<ScheduleMessageResult>;
  interface ScheduleMessageArgs {
    /** @minLength 1 */
    channel: string;
    /** @minLength 1 @maxLength 40000 */
    text: string;
    /** Unix time in seconds. @minimum 0 */
    post_at: number;
    thread_ts?: string;
  }
  interface ScheduleMessageResult {
    scheduled_message_id: string;
    post_at: number;
  }
}

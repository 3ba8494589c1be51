declare namespace http {
  /** POST a JSON payload to a webhook URL with an optional HMAC signature header. */
  function post_webhook(args: PostWebhookArgs): Promise<PostWebhookResult>;
  interface PostWebhookArgs {
    /** @pattern ^https:// @format uri */
    url: string;
    payload: { [key: string]: unknown };
    /** @default false */
    sign?: boolean;
    /** @default 2 @minimum 0 @maximum 5 */
    retries?: number;
  }
  interface PostWebhookResult {
    status: number;
    attempts: number;
  }
}

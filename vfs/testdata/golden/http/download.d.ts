declare namespace http {
  /** Download a URL into the workspace as a file, up to 100 MB. */
  function download(args: DownloadArgs): Promise<DownloadResult>;
  interface DownloadArgs {
    /** @format uri */
    url: string;
    /** Workspace path to write. @minLength 1 */
    path: string;
    /** @default false */
    overwrite?: boolean;
  }
  interface DownloadResult {
    path: string;
    bytes: number;
    content_type?: string;
    sha256?: string;
  }
}

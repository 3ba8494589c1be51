declare namespace drive {
  /**
   * Download a file's raw bytes as base64 (up to 20 MB).
   * Read-only.
   */
  function download_file(args: DownloadFileArgs): Promise<DownloadFileResult>;
  interface DownloadFileArgs {
    /** @minLength 1 */
    file_id: string;
  }
  interface DownloadFileResult {
    name: string;
    mime_type: string;
    content_base64: string;
  }
}

declare namespace http {
  /** Send a GraphQL query or mutation with variables to an allowed endpoint. */
  function graphql(args: GraphqlArgs): Promise<GraphqlResult>;
  interface GraphqlArgs {
    /** @format uri */
    endpoint: string;
    /** @minLength 1 */
    query: string;
    variables?: { [key: string]: unknown };
    operation_name?: string;
  }
  interface GraphqlResult {
    data?: { [key: string]: unknown } | null;
    errors?: {
      message: string;
      path?: (string | number)[];
    }[];
  }
}

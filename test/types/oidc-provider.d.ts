/** The OpenID provider used by the OAuth tests ships no type declarations. */
declare module 'oidc-provider' {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const Provider: any;
  export default Provider;
}

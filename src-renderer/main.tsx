import '@mantine/core/styles.css';
import '@mantine/charts/styles.css';
import '@mantine/dropzone/styles.css';
import '@mantine/notifications/styles.css';
import './styles/app.css';
import { MantineProvider } from '@mantine/core';
import { ModalsProvider } from '@mantine/modals';
import { Notifications } from '@mantine/notifications';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { AdminApiError } from './api/client.ts';
import { App } from './app/App.tsx';
import { useLocation } from './lib/router.tsx';
import { SignInPage } from './pages/SignIn.tsx';
import { SetupPage } from './pages/Setup.tsx';
import { SetPasswordPage } from './pages/SetPassword.tsx';
import { cssVariablesResolver, theme } from './app/theme.ts';
import { LiveProvider } from './live/LiveProvider.tsx';

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // The event stream keeps data fresh: no refetch on focus, no polling.
      staleTime: Infinity,
      refetchOnWindowFocus: false,
      retry: (count, error) => !(error instanceof AdminApiError && error.status >= 400 && error.status < 500) && count < 2,
    },
  },
});

/** The sign-in page needs no data and opens no event stream; everything else does. */
function Root() {
  const { pathname } = useLocation();
  if (pathname === '/sign-in') return <SignInPage />;
  if (pathname === '/setup') return <SetupPage />;
  if (pathname === '/set-password') return <SetPasswordPage />;
  return (
    <LiveProvider>
      <App />
    </LiveProvider>
  );
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <MantineProvider theme={theme} defaultColorScheme="auto" cssVariablesResolver={cssVariablesResolver}>
      <QueryClientProvider client={queryClient}>
        <ModalsProvider labels={{ confirm: 'Confirm', cancel: 'Cancel' }}>
          <Notifications position="bottom-right" />
          <Root />
        </ModalsProvider>
      </QueryClientProvider>
    </MantineProvider>
  </StrictMode>,
);

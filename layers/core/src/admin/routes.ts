/** Every admin route, in one table (the authorization matrix test walks it). */
import type { RouteModule } from '../http/app.ts';
import { apiKeyRoutes } from './api-keys/routes.ts';
import { configRoutes } from './configs/routes.ts';
import { mountAdminRoutes, type AdminRoute } from './route.ts';

export const ADMIN_ROUTES: readonly AdminRoute[] = [...apiKeyRoutes, ...configRoutes];

export const adminModule: RouteModule = (app, deps) => mountAdminRoutes(app, deps, ADMIN_ROUTES);

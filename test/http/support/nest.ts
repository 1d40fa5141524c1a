/**
 * Real Nest applications for the shared HTTP suite, on the Express and the Fastify platform,
 * with FloodgateGuard as a global guard.
 */
import 'reflect-metadata';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  All,
  type ArgumentsHost,
  Catch,
  Controller,
  type ExceptionFilter,
  HttpException,
  type INestApplication,
  Module,
  Req,
  Res,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import express from 'express';
import { FloodgateGuard, type FloodgateRequest } from '../../../src/http/nestjs.js';
import { type App, type AppSpec, answerOf, type StartApp, sharedOptions } from './apps.js';

export type NestPlatform = 'express' | 'fastify';

/** Thrown by the test apps' onLimited; the filter below renders it as `418 custom`. */
export class CustomLimited extends Error {}

@Catch(CustomLimited)
export class CustomLimitedFilter implements ExceptionFilter {
  catch(_error: CustomLimited, host: ArgumentsHost): void {
    // Express's response and Fastify's reply both have status() and send().
    host
      .switchToHttp()
      .getResponse<{ status(code: number): { send(body: string): void } }>()
      .status(418)
      .send('custom');
  }
}

@Controller()
class EchoController {
  @All('*')
  echo(@Req() req: FloodgateRequest, @Res({ passthrough: true }) res: object) {
    const answer = answerOf((name) => req.headers[name]);
    // Express's response has set(); Fastify's reply has headers().
    const platform = res as { set?(headers: object): unknown; headers?(headers: object): unknown };
    if (platform.set !== undefined) platform.set(answer.headers);
    else platform.headers?.(answer.headers);
    const body = { remaining: req.rateLimit?.remaining ?? null };
    // Nest answers a handler's return value with the route's status: a failure is an exception.
    if (answer.status !== 200) throw new HttpException(body, answer.status);
    return body;
  }
}

@Module({ controllers: [EchoController] })
class EchoModule {}

/** Creates a Nest application of `module` on `platform`, listening on a free loopback port. */
export async function startNestApp(
  module: object,
  platform: NestPlatform,
  trustLoopbackProxy: boolean,
  configure: (app: INestApplication) => void,
): Promise<App> {
  let app: INestApplication;
  if (platform === 'express') {
    const instance = express();
    if (trustLoopbackProxy) instance.set('trust proxy', 'loopback');
    app = await NestFactory.create(module, new ExpressAdapter(instance), { logger: false });
  } else {
    const adapter = new FastifyAdapter({ trustProxy: trustLoopbackProxy ? '127.0.0.1' : false });
    app = await NestFactory.create(module, adapter, { logger: false });
  }
  configure(app);
  await app.listen(0, '127.0.0.1');
  const { port } = (app.getHttpServer() as Server).address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, port, close: () => app.close() };
}

async function costFrom(value: string | string[] | undefined): Promise<number> {
  return value === undefined ? 1 : Number(value);
}

export function nestStarter(platform: NestPlatform): StartApp {
  return (spec: AppSpec) =>
    startNestApp(EchoModule, platform, spec.trustLoopbackProxy === true, (app) => {
      app.useGlobalFilters(new CustomLimitedFilter());
      app.useGlobalGuards(
        new FloodgateGuard({
          limiter: spec.limiter,
          ...sharedOptions(spec),
          ...(spec.headers === undefined ? {} : { headers: spec.headers }),
          ...(spec.costHeader ? { cost: (req) => costFrom(req.headers['x-cost']) } : {}),
          skip: (req) => new URL((req as { url?: string }).url ?? '/', 'http://x').pathname === '/health',
          ...(spec.onDecision ? { onDecision: (_req, decision) => spec.onDecision?.(decision) } : {}),
          ...(spec.customLimited ? { onLimited: () => new CustomLimited() } : {}),
        }),
      );
    });
}
